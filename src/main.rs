//! The `poll` binary: flags -> Config -> run -> print -> exit code. The body
//! and the one final error line are printed here, and only here.

use std::io::{self, Write};
use std::process::ExitCode;

use poll::Ending;

fn main() -> ExitCode {
    // jaq recurses: the whole run gets a large stack (reserved, not used).
    let run = std::thread::Builder::new().name("poll".into()).stack_size(poll::STACK_SIZE).spawn(|| {
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

/// Writes the body to stdout, then the error line to stderr; returns the exit code.
fn print(ending: Ending) -> u8 {
    let mut stdout = io::stdout().lock();
    let ending = match stdout.write_all(&ending.stdout).and_then(|()| stdout.flush()) {
        // A closed stdout (`poll URL | head -c1`) is not an error.
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => ending.stdout_failed(&e),
        _ => ending,
    };
    if let Some(line) = &ending.error_line {
        let _ = writeln!(io::stderr().lock(), "{line}");
    }
    ending.code
}
