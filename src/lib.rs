//! `poll`: send an HTTP request until a jq condition holds on its JSON body.
//!
//! The crate root is the module list and the public API: [`configure`] turns
//! the command line into a checked [`Config`] (or the ending of a run that
//! never starts: a usage error, `--help`); [`run`] (`run.rs`) runs it and
//! returns the one [`Ending`] that `main` prints.
//!
//! Layers only point down: main -> lib -> run -> target -> config -> output ->
//! progress -> state, conditional, credentials, record -> request, wait,
//! operation -> policy, condition, breaker, bucket, proxy, unix, cookies ->
//! url, text, parse, error, advice, summary, clock, file, prelude (see the
//! test in `tests/layers.rs`).
#![forbid(unsafe_code)]

pub mod advice;
mod breaker;
mod bucket;
mod cli;
mod clock;
pub mod condition;
mod conditional;
mod config;
mod cookies;
mod credentials;
mod docs;
mod error;
mod file;
pub mod fuzz;
mod operation;
mod output;
pub mod parse;
pub mod policy;
mod prelude;
mod progress;
mod proxy;
mod record;
mod request;
mod run;
pub mod state;
mod summary;
mod target;
mod text;
mod unix;
mod url;
mod wait;

use std::ffi::OsString;
use std::io::{IsTerminal as _, Read};

pub use crate::cli::Generate;
pub use crate::config::Config;
pub use crate::error::EXIT_CODES;

pub use crate::run::{Ending, STACK_SIZE, run};

use crate::cli::Asked;
use crate::error::Error;
use crate::output::Voice;

/// The command line, checked; or the ending of a run that never starts
/// (`--help`, `--version`, `--generate`, a usage error). `stdin` is read
/// only for `@-`.
pub fn configure(args: impl IntoIterator<Item = OsString>, stdin: &mut dyn Read) -> Result<Config, Ending> {
    // A flag clap rejects is written before --ci is known; the others follow it.
    let voice = Voice::plain(config::github_actions(None));
    let cli = match cli::parse(args) {
        Ok(Asked::Run(cli)) => *cli,
        Ok(Asked::Generate(kind)) => return Err(Ending::new(docs::generate(kind), None, voice)),
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) => {
            let text = e.render();
            let text = if std::io::stdout().is_terminal() { text.ansi().to_string() } else { text.to_string() };
            return Err(Ending::new(text.into_bytes(), None, voice));
        }
        Err(e) => return Err(Ending::new(Vec::new(), Some(&Error::Usage(cli::one_line(&e))), voice)),
    };
    let voice = Voice::plain(config::github_actions(cli.ci));
    Config::from_cli(cli, stdin).map_err(|e| Ending::new(Vec::new(), Some(&e), voice))
}
