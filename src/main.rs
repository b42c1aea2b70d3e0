//! The `poll` binary: parse flags, run, print the body and at most one error
//! line, and turn the result into the exit code. Errors are printed here only.

use std::process::ExitCode;

use clap::Parser as _;
use clap::error::ErrorKind;

use poll::cli::Cli;
use poll::config::Config;
use poll::error::Error;
use poll::fallback::Rescue;
use poll::output::{self, Reporter};

/// jaq parses and evaluates filters recursively; a generous stack lets every
/// filter that passes the length and nesting limits (see `condition.rs`) run.
const STACK_SIZE: usize = 256 << 20;

fn main() -> ExitCode {
    // The stack is reserved, not used: untouched pages cost no memory.
    match std::thread::Builder::new().name("poll".into()).stack_size(STACK_SIZE).spawn(real_main) {
        Ok(run) => run.join().unwrap_or(ExitCode::FAILURE),
        Err(e) => {
            eprintln!("poll: error: cannot start: {e}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("poll: error: {}", one_line(&e));
            return ExitCode::from(2);
        }
    };
    let config = match Config::from_cli(cli, &mut std::io::stdin()) {
        Ok(config) => config,
        Err(e) => {
            // Before any output is set up: a plain line, with what the user typed escaped.
            eprintln!("poll: error: {}", output::printable(&e.to_string()));
            return ExitCode::from(e.exit_code());
        }
    };

    let file = config.output.file.clone();
    let rescue = Rescue::new(&config);
    let mut reporter = Reporter::new(config.output.style);
    let mut result = poll::run(config, &mut reporter);
    let fallback = rescue.body(&result, &mut |w| reporter.warn(w));
    reporter.finish(&result);

    let body = match &result {
        Ok(body) | Err(Error::FailWhen(body)) => Some(body),
        Err(_) => fallback.as_ref(),
    };
    if let Some(body) = body
        && let Err(e) = output::write_body(body, file.as_deref())
    {
        // The exit code of a run that printed its --fallback stays what the run said.
        match fallback {
            Some(_) if result.is_err() => reporter.warn(&format!("--fallback: {e}")),
            _ => result = Err(e),
        }
    }
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(line) = reporter.error_line(&e) {
                eprintln!("{line}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}

/// clap's error as one line: its message, plus its tip when it has one. A
/// value that holds control characters (`-H $'a\r\nb'`) is shown escaped, so
/// the line stays one line and names the flag.
fn one_line(error: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    if let (ErrorKind::ValueValidation, Some(ContextValue::String(flag)), Some(ContextValue::String(value))) =
        (error.kind(), error.get(ContextKind::InvalidArg), error.get(ContextKind::InvalidValue))
    {
        let why = std::error::Error::source(error).map(|e| format!(": {e}")).unwrap_or_default();
        return format!("invalid value '{}' for '{flag}'{}", output::printable(value), output::printable(&why));
    }
    let rendered = error.render().to_string();
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty()).peekable();
    let mut first = output::printable(lines.next().unwrap_or("invalid arguments").trim_start_matches("error: "));
    // "the following required arguments were not provided:" lists them on the next lines.
    while first.ends_with(':')
        && let Some(item) = lines.next_if(|l| !l.starts_with("Usage:") && !l.starts_with("tip:"))
    {
        first = format!("{first} {}", output::printable(item));
    }
    match lines.find_map(|l| l.strip_prefix("tip: ")) {
        Some(tip) => format!("{first} ({tip})"),
        None => first,
    }
}
